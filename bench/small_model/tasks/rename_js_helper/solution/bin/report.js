#!/usr/bin/env node
'use strict';

const { renderTable } = require('../lib/table');
const { leftPad } = require('../lib/text');

const rows = [['rent', 1200], ['food', 310], ['bus', 45]];
console.log(renderTable('March', rows));
console.log(leftPad('end', 13));
