/**
 * mingo's Aggregator, Query and find as the package exports them (every operator), made with one
 * set of options built once. The package's own classes copy its whole operator table (some 300
 * operators) into a new context at every construction: two thirds of a like's pipeline update on
 * this server (72 -> 25 us an update). The options class that takes a context without copying it
 * is not exported: it is loaded from the package's own file, the module instance its classes use.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { Decimal128, Long } from 'bson';
import { Context } from 'mingo';
import { Aggregator as BaseAggregator } from 'mingo/aggregator';
import { Query as BaseQuery } from 'mingo/query';
import * as accumulator from 'mingo/operators/accumulator';
import * as expression from 'mingo/operators/expression';
import * as pipeline from 'mingo/operators/pipeline';
import * as projection from 'mingo/operators/projection';
import * as query from 'mingo/operators/query';
import * as window from 'mingo/operators/window';
import type { AnyObject, Options } from 'mingo/types';

type MingoOptions = Partial<Options>;
const load = createRequire(__filename);
const { ComputeOptions, evalExpr } = load(path.join(path.dirname(load.resolve('mingo')), 'core', '_internal.js')) as {
  ComputeOptions: { init(options: MingoOptions): MingoOptions };
  evalExpr(obj: AnyObject, expr: unknown, options: Options): unknown;
};

type Operator = (obj: AnyObject, expr: unknown, options: Options) => unknown;
const bsonTypeOf = (value: unknown) => (value as { _bsontype?: string } | null)?._bsontype;
const ARITHMETIC = new Set(['$add', '$subtract', '$multiply']);
/**
 * An operator that reads a Decimal128 or an Int64 by value, as MongoDB does (mingo takes them for no
 * number: $isNumber false, $add refused). Only the operator's own arguments are converted, so a
 * value copied or set elsewhere keeps its type; arithmetic on a decimal gives a decimal, on an Int64
 * an Int64 (counters are integers: a double is exact).
 */
const byValue =
  (name: string, operator: Operator): Operator =>
  (obj, expr, options) => {
    const args = evalExpr(obj, expr, options);
    // The arguments as written: a list, or one operand (which may be an array: `$type: '$tags'`).
    const list = Array.isArray(expr) ? (args as unknown[]) : [args];
    const types = list.map(bsonTypeOf);
    const wide = types.includes('Decimal128') ? 'Decimal128' : types.includes('Long') ? 'Long' : undefined;
    if (name === '$type' && (types[0] === 'Decimal128' || types[0] === 'Long')) return types[0] === 'Decimal128' ? 'decimal' : 'long';
    // The operator is given the values, not the expressions again: each argument is computed once.
    const literal = (value: unknown) => ({ $literal: bsonTypeOf(value) === 'Decimal128' || bsonTypeOf(value) === 'Long' ? Number(String(value)) : value });
    const result = operator(obj, Array.isArray(expr) ? list.map(literal) : literal(args), options);
    if (!wide || !ARITHMETIC.has(name) || typeof result !== 'number') return result;
    if (wide === 'Decimal128') return Decimal128.fromString(String(result));
    return Number.isInteger(result) ? Long.fromNumber(result) : result;
  };
const BY_VALUE = ['$add', '$subtract', '$multiply', '$isNumber', '$type', '$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$cmp'] as const;

const CONTEXT = Context.init({
  accumulator,
  expression: { ...expression, ...Object.fromEntries(BY_VALUE.map((name) => [name, byValue(name, expression[name])])) },
  pipeline,
  projection,
  query,
  window,
});
/** The options of every Aggregator and Query made without options of their own. */
const SHARED = ComputeOptions.init({ context: CONTEXT });
/** Options of a caller's own (variables, a collection resolver): the context copied once, as mingo does. */
const withContext = (options?: MingoOptions) => (options ? ComputeOptions.init({ ...options, context: CONTEXT }) : SHARED);

export class Aggregator extends BaseAggregator {
  constructor(stages: ConstructorParameters<typeof BaseAggregator>[0], options?: MingoOptions) {
    super(stages, withContext(options));
  }
}

export class Query extends BaseQuery {
  constructor(condition: ConstructorParameters<typeof BaseQuery>[0], options?: MingoOptions) {
    super(condition, withContext(options));
  }
}

export const find = (docs: ConstructorParameters<typeof BaseAggregator>[0], condition: ConstructorParameters<typeof BaseQuery>[0], fields?: Parameters<BaseQuery['find']>[1]) => new Query(condition).find(docs, fields);
