"""Test doubles shared by several test modules (servers, fixtures); never imported by library code."""
