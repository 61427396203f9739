"""torchvision-9606: CUDA decode_jpeg overwrites memory the caller just freed (see README.md)."""
