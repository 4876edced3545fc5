/** A version names one day's queue: the date of `generatedAt` in the business time zone. */

/** YYYYMMDD of `at` in `timeZone`. */
export function versionFor(at: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(at);
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  return `${get('year')}${get('month')}${get('day')}`;
}
