"""Pages of docs/ made from the code's own tables."""
