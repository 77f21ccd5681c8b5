"""Rendering: tables for people, JSON/YAML for machines, exports and plots."""
