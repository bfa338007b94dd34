"""githooks"""
