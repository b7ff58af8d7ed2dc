"""The dashboard surface tier."""
