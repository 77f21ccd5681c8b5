"""The profiler: what one training step of a model costs (FLOPs, bytes, memory), counted per aten op.

Entry point: `advisor.profiler.profile.profile_model`; the saved format: `advisor.profiler.schema`.
Importing this package does not import torch (the schema is pure pydantic).
"""
