"""Reports for people: the run report page (data, SVG timeline, HTML,
anomaly sentences) and verdict tables."""
