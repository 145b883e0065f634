"""Plain-text parsing shared by checks and scanners: claims and sentences, numbers, polarity, normalised views."""
