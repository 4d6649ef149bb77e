#!/usr/bin/env bash
# python tools/tabconv.pyz data/stock.csv
cat > stock.json <<'JSON'
[
  {
    "sku": "TB-100",
    "name": "Tea bags, green",
    "qty": "240",
    "price": "3.95"
  },
  {
    "sku": "MG-210",
    "name": "Mug, blue",
    "qty": "36",
    "price": "7.50"
  },
  {
    "sku": "KT-015",
    "name": "Kettle 1.7 l",
    "qty": "8",
    "price": "34.00"
  },
  {
    "sku": "FL-330",
    "name": "Filter papers",
    "qty": "500",
    "price": "2.25"
  }
]
JSON
