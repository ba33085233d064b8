# SPDX-License-Identifier: Apache-2.0
"""The package's version: the library's release (KeybayVersion.release, debian/changelog).
pyproject.toml reads it from here; tests/test_install.py fails when they differ."""
__version__ = "1.2.0"
