import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { ValidationError, validateSync } from 'class-validator';
import { ParameterError, ProblemException } from '../problem-details/problem.exception';

/**
 * Validates `@Query()` DTOs. Every offending parameter is reported at once: values given more than
 * once or with brackets (`page=1&page=2`, `page[]=1`), parameters the route does not know, and
 * values the DTO's decorators reject.
 */
@Injectable()
export class QueryValidationPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type !== 'query' || !metadata.metatype || metadata.metatype === Object) {
      return value;
    }
    const errors: ParameterError[] = [];
    const scalars: Record<string, string> = {};
    for (const [parameter, raw] of Object.entries((value ?? {}) as Record<string, unknown>)) {
      if (typeof raw === 'string') scalars[parameter] = raw;
      else errors.push({ parameter, message: 'must be given once, as a single value' });
    }

    const instance = plainToInstance(metadata.metatype, scalars) as object;
    const validationErrors = validateSync(instance, {
      whitelist: true,
      forbidNonWhitelisted: true,
      forbidUnknownValues: true,
      stopAtFirstError: true,
    });
    errors.push(...validationErrors.map(toParameterError));

    if (errors.length > 0) throw ProblemException.badRequest(errors);
    return instance;
  }
}

function toParameterError(error: ValidationError): ParameterError {
  const constraints = error.constraints ?? {};
  if (constraints.whitelistValidation) {
    return { parameter: error.property, message: 'is not a known parameter' };
  }
  const [message] = Object.values(constraints);
  return { parameter: error.property, message: message ?? 'is not valid' };
}
