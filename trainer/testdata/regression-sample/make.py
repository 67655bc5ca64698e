# Writes regression.csv: the synthetic regression sample (see README.md).
import random

random.seed(31)
with open("regression.csv", "w") as f:
    f.write("f0,f1,f2,f3,bias,s,y\n")
    for i in range(1500):
        x = [round(4 + 2 * random.random(), 4) for _ in range(4)]
        y = 2 * (x[0] - 5) - (x[1] - 5) + 0.5 * (x[2] - 5) + 0.2 * random.gauss(0, 1)
        f.write("%s,1,%d,%.4f\n" % (",".join("%.4f" % v for v in x), i % 2, y))
