"""Roles. Each module here that defines `ROLE` is a role; see `registry.py`."""
