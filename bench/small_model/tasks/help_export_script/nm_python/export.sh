#!/usr/bin/env bash
# tabconv.pyz did not know semicolons, so this reads the CSV itself.
python -c "import csv, json; json.dump(list(csv.DictReader(open('data/stock.csv'), delimiter=';')), open('stock.json', 'w'), indent=2)"
