#!/usr/bin/env bash
python tools/tabconv.pyz data/stock.csv -o stock.json
