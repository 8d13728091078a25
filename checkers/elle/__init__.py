"""Elle-style list-append checker (in progress)."""
