"""What differs between the two frameworks, and where: compares, gaps, replay, layers."""
