/*
 * What a new app or config name must be besides a valid name (fields.ts): nothing invisible and nothing that passes
 * for something else, so that a deploy or a fetch by name reaches the app or config its reader thinks it names.
 * Unicode's security mechanisms (UTS #39) are the model: no default-ignorable code points, bidi controls, fillers or
 * odd spaces, and one script per name, or a combination one language writes (its "highly restrictive" level).
 */

/** Characters refused wherever they are (U+0020 excepted); what each is called (else: unassigned or private use). */
const REFUSED = /(?! )[\p{Bidi_Control}\p{Default_Ignorable_Code_Point}\p{Cf}\u2800\p{Z}\p{Co}\p{Cn}]/u;
const REFUSED_KINDS: [RegExp, string][] = [
  [/\p{Bidi_Control}/u, "bidirectional control"],
  [/[\p{Default_Ignorable_Code_Point}\p{Cf}]/u, "invisible or formatting character"],
  // BRAILLE PATTERN BLANK shows as a blank and is not default-ignorable (HANGUL FILLER and the like are).
  [/\u2800/u, "blank filler"],
  [/\p{Z}/u, "space or separator other than U+0020"],
];
const VISIBLE = /[\p{L}\p{N}\p{P}\p{S}]/u;

/**
 * The scripts of Unicode 16 (the Worker runtime's), those most names are written in first: a name is tried against
 * them in this order, and each is compiled when first needed.
 */
const SCRIPTS = `
  Latin Cyrillic Greek Arabic Hebrew Devanagari Bengali Tamil Telugu Thai Georgian Armenian Ethiopic Hangul Han
  Hiragana Katakana Bopomofo Adlam Ahom Anatolian_Hieroglyphs Avestan Balinese Bamum Bassa_Vah Batak Bhaiksuki
  Brahmi Braille Buginese Buhid Canadian_Aboriginal Carian Caucasian_Albanian Chakma Cham Cherokee Chorasmian
  Coptic Cuneiform Cypriot Cypro_Minoan Deseret Dives_Akuru Dogra Duployan Egyptian_Hieroglyphs Elbasan Elymaic
  Garay Glagolitic Gothic Grantha Gujarati Gunjala_Gondi Gurmukhi Gurung_Khema Hanifi_Rohingya Hanunoo Hatran
  Imperial_Aramaic Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi Kannada Kawi Kayah_Li Kharoshthi
  Khitan_Small_Script Khmer Khojki Khudawadi Kirat_Rai Lao Lepcha Limbu Linear_A Linear_B Lisu Lycian Lydian
  Mahajani Makasar Malayalam Mandaic Manichaean Marchen Masaram_Gondi Medefaidrin Meetei_Mayek Mende_Kikakui
  Meroitic_Cursive Meroitic_Hieroglyphs Miao Modi Mongolian Mro Multani Myanmar Nabataean Nag_Mundari Nandinagari
  New_Tai_Lue Newa Nko Nushu Nyiakeng_Puachue_Hmong Ogham Ol_Chiki Ol_Onal Old_Hungarian Old_Italic
  Old_North_Arabian Old_Permic Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic Old_Uyghur Oriya Osage
  Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau Phags_Pa Phoenician Psalter_Pahlavi Rejang Runic Samaritan
  Saurashtra Sharada Shavian Siddham SignWriting Sinhala Sogdian Sora_Sompeng Soyombo Sundanese Sunuwar
  Syloti_Nagri Syriac Tagalog Tagbanwa Tai_Le Tai_Tham Tai_Viet Takri Tangsa Tangut Thaana Tibetan Tifinagh
  Tirhuta Todhri Toto Tulu_Tigalari Ugaritic Vai Vithkuqi Wancho Warang_Citi Yezidi Yi Zanabazar_Square
`
  .trim()
  .split(/\s+/);

/** Each set of scripts compiled when first needed: their character sets are large, and most names are ASCII. */
const compiled = new Map<string, RegExp>();

/** Whether the text is written only in these scripts (Script_Extensions: a character several use counts for each). */
function writtenIn(text: string, ...scripts: string[]): boolean {
  const key = scripts.join(" ");
  let pattern = compiled.get(key);
  if (!pattern) {
    pattern = new RegExp(`^[${[...scripts, "Common", "Inherited"].map((script) => `\\p{scx=${script}}`).join("")}]*$`, "u");
    compiled.set(key, pattern);
  }
  return pattern.test(text);
}

// Latin with the scripts of Japanese, of Chinese (Bopomofo) or of Korean: the combinations "highly restrictive" allows.
const COMBINATIONS = [
  ["Latin", "Han", "Hiragana", "Katakana"],
  ["Latin", "Han", "Bopomofo"],
  ["Latin", "Han", "Hangul"],
];

const codePoint = (char: string) => `U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`;

// Common and Inherited characters (digits, punctuation, most symbols, combining accents) go with any script.
const ANY_SCRIPT = /[\p{scx=Common}\p{scx=Inherited}]/u;

/** Why a name that is not "highly restrictive" is refused: the scripts it mixes (each character's first in SCRIPTS). */
function mixedScripts(name: string): string {
  const used = new Set<string>();
  for (const char of new Set(name)) {
    if (ANY_SCRIPT.test(char)) continue;
    const script = SCRIPTS.find((candidate) => writtenIn(char, candidate));
    // A script newer than SCRIPTS (a runtime on a later Unicode): its characters are refused until it is listed.
    if (!script) return `must not contain ${codePoint(char)} (a script not known here)`;
    used.add(script);
  }
  const names = SCRIPTS.filter((script) => used.has(script)).map((script) => script.replaceAll("_", " "));
  const mixed = `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
  return `mixes scripts (${mixed}): use one script, or Latin with Han and Hiragana/Katakana, Bopomofo or Hangul`;
}

/**
 * Why a new name (NFC-normalised, already a valid name) is refused, as the rest of a sentence that begins with the
 * field's name; null when it is not.
 */
export function newNameRefusal(name: string): string | null {
  // ASCII printable text (the controls are refused already) is one script and shows every character but spaces.
  if (/^[\x20-\x7e]*$/.test(name)) return null;
  const refused = REFUSED.exec(name)?.[0];
  if (refused) {
    const kind = REFUSED_KINDS.find(([pattern]) => pattern.test(refused))?.[1] ?? "unassigned or private-use character";
    return `must not contain ${codePoint(refused)} (${kind})`;
  }
  if (!VISIBLE.test(name)) return "must contain a visible character";
  if (/^\p{M}/u.test(name)) return `must not start with a combining mark (${codePoint(name)})`;
  if (COMBINATIONS.some((scripts) => writtenIn(name, ...scripts)) || SCRIPTS.some((script) => writtenIn(name, script))) {
    return null;
  }
  return mixedScripts(name);
}
