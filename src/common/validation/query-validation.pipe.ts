import {
  ArgumentMetadata,
  Inject,
  Injectable,
  ValidationError,
  ValidationPipe,
} from '@nestjs/common';
import type { ValidatorOptions } from 'class-validator';
import { APP_CONFIG, type AppConfig } from '../../config/app-config';
import { PaginationDto } from '../listing/listing-query.dto';
import { ParameterError, ProblemException } from '../problem-details/problem.exception';
import { MalformedEncoding } from './strict-query';

/** What the validation part throws, so that `transform` can add the parameters it refused itself. */
class InvalidParameters extends Error {
  constructor(readonly errors: ParameterError[]) {
    super('invalid query parameters');
  }
}

/**
 * Nest's ValidationPipe for `@Query()` DTOs, plus the checks it lacks: a value given more than
 * once or with brackets (`page=1&page=2`, `page[]=1`), or not percent-encoded UTF-8 (`parseQuery`),
 * is refused. Every offending parameter is
 * reported at once: repeated ones, unknown ones, and values the DTO's decorators reject.
 */
@Injectable()
export class QueryValidationPipe extends ValidationPipe {
  private readonly maxLimit: number;

  constructor(@Inject(APP_CONFIG) config: Pick<AppConfig, 'pagination'>) {
    super({
      transform: true,
      whitelist: true,
      forbidNonWhitelisted: true,
      forbidUnknownValues: true,
      stopAtFirstError: true,
      exceptionFactory: (errors) => new InvalidParameters(errors.map(toParameterError)),
    });
    this.maxLimit = config.pagination.maxLimit;
  }

  /** The DTO's checks, and this app's PAGE_LIMIT_MAX (apps in one process may differ). */
  protected override async validate(
    object: object,
    options?: ValidatorOptions,
  ): Promise<ValidationError[]> {
    const errors = await super.validate(object, options);
    if (!(object instanceof PaginationDto)) return errors;
    const bound = { integerParam: `must be an integer between 1 and ${this.maxLimit}` };
    const refused = errors.find((error) => error.property === 'limit');
    if (refused?.constraints?.integerParam) refused.constraints = bound;
    else if (!refused && object.limit !== undefined && object.limit > this.maxLimit) {
      errors.push({ property: 'limit', value: object.limit, constraints: bound });
    }
    return errors;
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type !== 'query') return value;
    const refused: ParameterError[] = [];
    const scalars: Record<string, string> = {};
    for (const [parameter, raw] of Object.entries((value ?? {}) as Record<string, unknown>)) {
      // `__proto__`, `constructor`, `toString`…: no DTO declares them, and an object's own
      // properties of those names would be dropped or ignored on the way to the validator.
      if (parameter in Object.prototype) {
        refused.push({ parameter, message: 'is not a known parameter' });
      } else if (raw instanceof MalformedEncoding) {
        refused.push({ parameter, message: MALFORMED });
      } else if (typeof raw === 'string') scalars[parameter] = raw;
      else refused.push({ parameter, message: 'must be given once, as a single value' });
    }
    let validated: unknown;
    try {
      validated = await super.transform(scalars, metadata);
    } catch (error) {
      if (!(error instanceof InvalidParameters)) throw error;
      throw ProblemException.badRequest([...refused, ...error.errors]);
    }
    if (refused.length) throw ProblemException.badRequest(refused);
    return validated;
  }
}

const MALFORMED =
  'is not percent-encoded UTF-8: send a % as %25, and each byte of any other character as %XX';

function toParameterError(error: ValidationError): ParameterError {
  const constraints = error.constraints ?? {};
  if (constraints.whitelistValidation) {
    return { parameter: error.property, message: 'is not a known parameter' };
  }
  const [message] = Object.values(constraints);
  return { parameter: error.property, message: message ?? 'is not valid' };
}
