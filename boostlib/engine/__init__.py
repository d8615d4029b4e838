"""The engine: binning, trees and their grower, the model, the training loop."""
