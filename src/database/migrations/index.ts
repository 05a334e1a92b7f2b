import { InitialSchema1763769600000 } from './1763769600000-initial-schema';
import { ListingIndexes1763856000000 } from './1763856000000-listing-indexes';
import { LoginActivitiesIdIndex1763942400000 } from './1763942400000-login-activities-id-index';
import { LoginActivitiesOutcomeTimeIndex1763942460000 } from './1763942460000-login-activities-outcome-time-index';
import { IndexPerFilterAndSort1764028800000 } from './1764028800000-index-per-filter-and-sort';
import { UsersCoveringIndexes1764201600000 } from './1764201600000-users-covering-indexes';
import { UsersNameEmailShared1764374400000 } from './1764374400000-users-name-email-shared';
import { UsersNameCollation1764547200000 } from './1764547200000-users-name-collation';
import { UsersRoleUpdatedAtIndex1764720000000 } from './1764720000000-users-role-updated-at-index';
import { LoginActivitiesIpAddressNocase1764892800000 } from './1764892800000-login-activities-ip-address-nocase';
import { TextColumnsUtf8mb41765065600000 } from './1765065600000-text-columns-utf8mb4';
import { LoginActivitiesValuesNocase1765238400000 } from './1765238400000-login-activities-values-nocase';
import { UsersNameEmailSharedStored1765411200000 } from './1765411200000-users-name-email-shared-stored';

/** Every migration, in order. Listed by class (not by glob) so ts and compiled js load alike. */
export const migrations = [
  InitialSchema1763769600000,
  ListingIndexes1763856000000,
  LoginActivitiesIdIndex1763942400000,
  LoginActivitiesOutcomeTimeIndex1763942460000,
  IndexPerFilterAndSort1764028800000,
  UsersCoveringIndexes1764201600000,
  UsersNameEmailShared1764374400000,
  UsersNameCollation1764547200000,
  UsersRoleUpdatedAtIndex1764720000000,
  LoginActivitiesIpAddressNocase1764892800000,
  TextColumnsUtf8mb41765065600000,
  LoginActivitiesValuesNocase1765238400000,
  UsersNameEmailSharedStored1765411200000,
];
