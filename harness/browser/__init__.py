"""`faultline serve`: a results browser. Pure pieces (the catalog's filters,
the trend's figures, the diff of two runs) and their HTML are kept apart from
the loopback HTTP server that serves them."""
