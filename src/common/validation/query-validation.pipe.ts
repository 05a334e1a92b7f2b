import { ArgumentMetadata, Injectable, PipeTransform, Type } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { ValidationError, validateSync } from 'class-validator';
import { ParameterError, ProblemException } from '../problem-details/problem.exception';

/** What validating one query gave: the DTO, or the errors. */
type Validated = { instance: object; errors?: undefined } | { errors: ParameterError[] };

/** Distinct queries remembered per DTO class before the oldest are forgotten. */
const MEMO_SIZE = 1000;
/** Longer queries are validated every time, so that the memo stays small (under 1 MB a class). */
const MEMO_KEY_MAX = 512;
const memo = new Map<Type<unknown>, Map<string, Validated>>();

/**
 * Forgets every remembered result; called when a bound the decorators read changes
 * (`configurePagination`).
 */
export function forgetValidatedQueries(): void {
  memo.clear();
}

/**
 * Validates `@Query()` DTOs. Every offending parameter is reported at once: values given more than
 * once or with brackets (`page=1&page=2`, `page[]=1`), parameters the route does not know, and
 * values the DTO's decorators reject.
 *
 * The result depends on the query alone, so it is remembered per DTO class and query (the last
 * MEMO_SIZE of them): pollers and dashboards ask the same queries over and over, and
 * class-transformer plus class-validator cost about 3% of a listing request's CPU. Each call gets
 * its own copy of the DTO.
 */
@Injectable()
export class QueryValidationPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type !== 'query' || !metadata.metatype || metadata.metatype === Object) {
      return value;
    }
    let known = memo.get(metadata.metatype);
    if (!known) memo.set(metadata.metatype, (known = new Map()));
    const key = JSON.stringify(value ?? {});
    let validated = known.get(key);
    if (!validated) {
      validated = validate(value, metadata.metatype);
      if (key.length <= MEMO_KEY_MAX) {
        if (known.size >= MEMO_SIZE) known.delete(known.keys().next().value!);
        known.set(key, validated);
      }
    }
    if (validated.errors) throw ProblemException.badRequest(validated.errors);
    return Object.assign(
      Object.create(Object.getPrototypeOf(validated.instance)),
      validated.instance,
    );
  }
}

function validate(value: unknown, metatype: Type<unknown>): Validated {
  const errors: ParameterError[] = [];
  const scalars: Record<string, string> = {};
  for (const [parameter, raw] of Object.entries((value ?? {}) as Record<string, unknown>)) {
    if (typeof raw === 'string') scalars[parameter] = raw;
    else errors.push({ parameter, message: 'must be given once, as a single value' });
  }

  const instance = plainToInstance(metatype, scalars) as object;
  const validationErrors = validateSync(instance, {
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    stopAtFirstError: true,
  });
  errors.push(...validationErrors.map(toParameterError));
  return errors.length > 0 ? { errors } : { instance };
}

function toParameterError(error: ValidationError): ParameterError {
  const constraints = error.constraints ?? {};
  if (constraints.whitelistValidation) {
    return { parameter: error.property, message: 'is not a known parameter' };
  }
  const [message] = Object.values(constraints);
  return { parameter: error.property, message: message ?? 'is not valid' };
}
