# every size 0 bytes
0 0
0 1
