# sizes of 1e300 bytes: the mean makes the arrival rate 0, so no flow would start
1000 0
1e300 1
