import { InitialSchema1763769600000 } from './1763769600000-initial-schema';
import { ListingIndexes1763856000000 } from './1763856000000-listing-indexes';

/** Every migration, in order. Listed by class (not by glob) so ts and compiled js load alike. */
export const migrations = [InitialSchema1763769600000, ListingIndexes1763856000000];
