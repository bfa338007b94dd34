"""Sharing memory through git remotes: fetch, check what arrived, merge, push."""
