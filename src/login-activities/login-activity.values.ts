/** The known values of login activity fields, documented as enums (and accepted as filters). */
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
