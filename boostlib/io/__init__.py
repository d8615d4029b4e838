"""Input and output: model files and data tables."""
