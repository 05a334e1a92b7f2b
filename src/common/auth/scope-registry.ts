import { byCodePoint } from '../by-code-point';

/**
 * The scopes tokens may carry. Core code does not list them: each listing declares its own with
 * `defineScope` (or simply by naming it in `@RequireScopes`), so a new module brings its scope
 * without editing anything shared. The token issuer accepts exactly the registered scopes.
 */
export interface ScopeDefinition {
  name: string;
  description: string;
}

const SCOPE_NAME = /^[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$/;
const registry = new Map<string, ScopeDefinition>();

/**
 * Registers a scope (idempotent; a later description replaces a generic one) and returns its name,
 * typed as the literal so it can be used in `as const` lists.
 */
export function defineScope<TName extends string>(name: TName, description?: string): TName {
  if (!SCOPE_NAME.test(name)) {
    throw new Error(`scope "${name}" must look like "resource:action" (lowercase, digits, _)`);
  }
  const known = registry.get(name);
  if (!known || description) {
    registry.set(name, {
      name,
      description: description ?? known?.description ?? `Grants ${name}.`,
    });
  }
  return name;
}

export function registeredScopes(): ScopeDefinition[] {
  return [...registry.values()].sort((a, b) => byCodePoint(a.name, b.name));
}

/** The registered scopes' names, in the same order. */
export const registeredScopeNames = (): string[] => registeredScopes().map((scope) => scope.name);

export function isRegisteredScope(name: string): boolean {
  return registry.has(name);
}
