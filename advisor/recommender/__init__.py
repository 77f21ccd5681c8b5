"""Recommender: candidate enumeration, filters that record rejections, ranking, Pareto front, comparison."""
