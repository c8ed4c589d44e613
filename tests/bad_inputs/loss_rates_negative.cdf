# a negative loss rate
-0.1 0
0.05 1
