"""Storage backends behind one FileIO protocol."""
