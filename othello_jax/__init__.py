"""othello-jax: a JAX-native AlphaZero for Othello."""

__version__ = "0.1.0"
