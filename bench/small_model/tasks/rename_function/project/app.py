from shop import cart
from shop.checkout import receipt

c = cart.Cart()
c.add("tea", 450, 2)
c.add("scone", 325)
print(receipt(c, discount_percent=10))
print("before discount:", cart.calc_total(c))
