import type { Type } from '@nestjs/common';
import { paramValues } from '../validation/query-params';
import type { FilterDeclaration, FilterOperator, ListingDefinition } from './listing-definition';

const FILTERS = Symbol('listing:filters');

/**
 * Declares a query DTO property as a filter of its listing: how it filters (`operator`) and which
 * column(s) (`column`, by default the parameter's own name; for `prefix`, a list); `exact`: an
 * `equals` compared byte for byte, not in the column's collation; `shared`: see its declaration. The listing's
 * definition reads these back (`defineListing`), so a filter is declared once, where it is validated.
 */
export function Filter(
  operator: FilterOperator,
  column?: string | string[],
  { exact, shared }: Pick<FilterDeclaration, 'exact' | 'shared'> = {},
): PropertyDecorator {
  return (target, property) => {
    const parameter = String(property);
    const declaration: FilterDeclaration = Array.isArray(column)
      ? { operator, column: column[0], columns: column, ...(shared && { shared }) }
      : { operator, column: column ?? parameter, ...(exact && { exact }) };
    const inherited = (Reflect.getMetadata(FILTERS, target) ?? {}) as Record<
      string,
      FilterDeclaration
    >;
    Reflect.defineMetadata(FILTERS, { ...inherited, [parameter]: declaration }, target);
  };
}

/**
 * The filters a query DTO class declares with `@Filter`, by parameter name, with the values of
 * those that accept only a few (`EnumParam`, `BooleanParam`).
 */
export function filtersOf(dto: Type<unknown>): Record<string, FilterDeclaration> {
  const declared = (Reflect.getMetadata(FILTERS, dto.prototype) ?? {}) as Record<
    string,
    FilterDeclaration
  >;
  return Object.fromEntries(
    Object.entries(declared).map(([parameter, declaration]) => {
      const values = paramValues(dto.prototype as object, parameter);
      return [parameter, values ? { ...declaration, values } : declaration];
    }),
  );
}

/** A query DTO class made by `ListingQueryDto`: it knows its sortable columns. */
export interface ListingQueryClass extends Type<unknown> {
  readonly sortableColumns: readonly string[];
}

/** A listing's definition: where its rows live, plus what its query DTO declares. */
export function defineListing(
  query: ListingQueryClass,
  source: Omit<ListingDefinition, 'sortableColumns' | 'filters'>,
): ListingDefinition {
  return { ...source, sortableColumns: query.sortableColumns, filters: filtersOf(query) };
}
