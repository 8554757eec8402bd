"""Build helpers for mpirep: MPI discovery, the extension build, the PEP 517 backend.

Used only while building; never installed.
"""
