"""sam2-460: torch.compile CUDA-graph output overwritten (SAM2's position-encoding cache)."""
