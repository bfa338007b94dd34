"""Retrieval: budgeted context packs (:mod:`.context`) and decision queries (:mod:`.ask`)."""
