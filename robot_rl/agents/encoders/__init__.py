"""Image encoders (small conv net, ResNet-10 with a learned spatial pooling head) and weight import."""
