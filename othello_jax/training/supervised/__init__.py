"""Supervised learning: a network trained on expert games (WThor) or exact labels, then usable to start self-play."""
