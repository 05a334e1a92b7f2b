import { defineScope } from '../common/auth/scope-registry';
import type { ListingDefinition } from '../common/listing/listing-definition';

export const LOGIN_ACTIVITIES_READ = defineScope(
  'login_activities:read',
  'List login activity (`GET /v1/login_activities`).',
);

export const AUTHENTICATION_METHODS = [
  'password',
  'oauth',
  'saml',
  'magic_link',
  'passkey',
] as const;
export const OAUTH_PROVIDERS = ['google', 'microsoft', 'github', 'okta', 'apple'] as const;
export const FAILURE_REASONS = [
  'invalid_credentials',
  'unknown_user',
  'account_locked',
  'account_disabled',
  'otp_invalid',
  'otp_expired',
  'oauth_denied',
  'password_expired',
] as const;

export const loginActivitiesListing: ListingDefinition = {
  resource: 'login_activities',
  table: 'login_activities',
  organizationColumn: 'organization_id',
  sortableColumns: ['created_at'],
  filters: {
    user_id: { operator: 'equals', column: 'user_id' },
    user_email: { operator: 'equals', column: 'user_email' },
    success: { operator: 'equals', column: 'success' },
    authentication_method: { operator: 'equals', column: 'authentication_method' },
    oauth_provider: { operator: 'equals', column: 'oauth_provider' },
    failure_reason: { operator: 'equals', column: 'failure_reason' },
    ip_address: { operator: 'equals', column: 'ip_address' },
    session_id: { operator: 'equals', column: 'session_id' },
    otp_required: { operator: 'equals', column: 'otp_required' },
    created_from: { operator: 'from', column: 'created_at' },
    created_to: { operator: 'to', column: 'created_at' },
  },
};
