"""gpus"""
