"""branches"""
