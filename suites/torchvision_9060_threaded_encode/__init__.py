"""torchvision-9060: multi-threaded GPU encode_jpeg gives corrupt JPEGs (see README.md)."""
