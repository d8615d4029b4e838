"""The package's version: one declaration, read by the build (``pyproject.toml``), the model
files, the plugin registry, ONNX exports and the command line, from any layer."""
__version__ = "0.1.0"
