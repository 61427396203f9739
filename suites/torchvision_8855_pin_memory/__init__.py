"""torchvision-8855: TVTensors lose their subclass and metadata through pin_memory (see README.md)."""
