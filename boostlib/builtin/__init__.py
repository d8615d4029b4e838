"""The built-in plugins: losses, row samplers and update rules, registered like third-party ones."""
