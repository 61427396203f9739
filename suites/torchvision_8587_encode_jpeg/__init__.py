"""torchvision-8587: GPU encode_jpeg / decode_jpeg noise and corruption (see README.md)."""
