helper
