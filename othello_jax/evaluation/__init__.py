"""Judging agents: matches with colours swapped on every opening (arena), opening lines, Elo
ratings, and what a network and its search think of a position (analysis)."""
