# loss rates written in percent by mistake
1 0
60 1
