"""The user surfaces: scikit-learn estimators, the command line, plotting."""
