"""The plugin machinery: hook specifications, the registry, plugin checks and the testing kit."""
